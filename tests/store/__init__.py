"""The Python adapter (tireless/store/): JobStore and AsyncJobStore alike, their pools, the
refusals as exceptions, listen()."""
