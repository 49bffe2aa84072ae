"""Code that runs user kernels. Imported only inside child processes."""
