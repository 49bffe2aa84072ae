from trialtui.cli import main

main()
