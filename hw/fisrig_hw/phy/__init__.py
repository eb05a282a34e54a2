"""The PHY side of the rig: the simulated transceiver, the PHY datapath and LiteSATA's link
layer composed for a one-clock rig."""
