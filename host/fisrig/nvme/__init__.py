"""The NVMe protocol as the host uses it: Identify's pages decoded and laid out as nvme-cli
lays them out (identify)."""
