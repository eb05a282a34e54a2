"""Our platform files, one per board: pin facts with their sources (docs/boards.md), and
the resources every board describes the same way."""

from litex.build.generic_platform import IOStandard, Pins, Subsignal

from fisrig_hw.phy.board_phy import POWER_PADS


def sata_port(index, tx_p, tx_n, rx_p, rx_n):
    """A SATA port's transceiver pair; transceiver pins take no IOStandard."""
    return ("sata", index, Subsignal("tx_p", Pins(tx_p)), Subsignal("tx_n", Pins(tx_n)),
            Subsignal("rx_p", Pins(rx_p)), Subsignal("rx_n", Pins(rx_n)))


def drive_power(pins, iostandard):
    """The load switch board's inputs, one pin each in POWER_PADS' order (en_3v3, en_5v,
    en_12v high = rail on; p3 high asserts the drive's Power Disable): the names
    fisrig_hw.phy.board_phy drives."""
    if len(pins) != len(POWER_PADS):
        raise ValueError(f"the load switch takes {len(POWER_PADS)} pins, not {len(pins)}")
    return ("drive_power", 0, *(Subsignal(name, Pins(pin)) for (name, _), pin in zip(POWER_PADS, pins)),
            IOStandard(iostandard))


def dram_module(name):
    """The litedram module class of that name (a platform's DRAM_MODULE)."""
    from litedram import modules
    return getattr(modules, name)
