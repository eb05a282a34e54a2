"""The SATA protocol as the host uses it: the ATA command set from the firmware core's
fisrig/ata.h (ata), and completions and log pages in words (decode)."""
