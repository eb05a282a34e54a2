"""The rig core (PHY, link, engine, power controller), its rings and CSRs on the SoC's bus,
the rig SoC for litex_sim and its build."""
