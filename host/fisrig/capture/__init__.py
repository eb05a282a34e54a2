"""The analyzer view (docs/capture.md): what crossed the rig's pins around a trigger, as
capture.parquet beside records.parquet, and read as an analyzer lists it (show), in
Perfetto (perfetto) and in a waveform viewer (vcd)."""
