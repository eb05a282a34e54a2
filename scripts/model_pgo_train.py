#!/usr/bin/env python3
"""The model's profile training for `make native` (scripts/build_native.sh): compiles
sim/model/training/model-training.toml (SATA) and model-training-nvme.toml (NVMe) for
their 16 GB drive and runs each on the instrumented fisrig-model of GEN_BUILD, which adds
to gcc's profile as it exits. Nothing of the runs is kept: their records go to a
temporary directory.

  model_pgo_train.py GEN_BUILD"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TRAINING = Path(__file__).resolve().parent.parent / "sim" / "model" / "training"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    gen = Path(argv[1]).resolve()
    os.environ["FISRIG_BUILD"] = str(gen)  # fisrig-drive's IDENTIFY from the same build
    from fisrig import plan
    from fisrig.run import prepare
    profile = str(TRAINING / "consumer-16gb.toml")
    for name in ("model-training.toml", "model-training-nvme.toml"):
        training = plan.load(TRAINING / name)
        prep = prepare(training, "model", profile=profile)
        with tempfile.TemporaryDirectory(prefix="fisrig-model-training-") as tmp:
            program = Path(tmp) / "program.bin"
            program.write_bytes(prep.compiled.program)
            cmd = [str(gen / "bin" / "fisrig-model"), "--program", str(program),
                   "--records", str(Path(tmp) / "records.bin"), "--profile", profile, "--quiet",
                   "--protocol", training.protocol]
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            print(f"model_pgo_train: the training run {name} failed (exit {done.returncode})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
