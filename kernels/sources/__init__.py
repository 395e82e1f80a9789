"""The kernel source: the built-in kernels and kernel files, parsed (never run)
into a plan of what each name is."""
