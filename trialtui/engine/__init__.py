"""The live loop: watcher, scheduler, job processes and the event stream. No Textual here."""
