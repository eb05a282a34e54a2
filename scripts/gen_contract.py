#!/usr/bin/env python3
"""Writes the Python side of the contract the C headers define: every constant (#define and
enum member) and every struct field's offset and size of firmware/core/include/fisrig/
{engine_if,program,vm,baremetal_if,ata,nvme,capture,pcie}.h, as the system C compiler computes them, into
hw/fisrig_hw/contract.py, the one copy the gateware, the host and the tests import.

    scripts/gen_contract.py           rewrite it
    scripts/gen_contract.py --check   exit 1 if it is stale (tests/host/test_contract.py)

The headers are only scanned for names; the values, offsets and sizes are the compiler's
(a tiny C program prints them), so a name the scan gets wrong fails to compile rather than
giving a wrong number. Every struct must be covered by its fields with no implicit padding:
the Python mirrors pack fields one after another.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "firmware" / "core" / "include"
HEADERS = ["engine_if.h", "program.h", "vm.h", "baremetal_if.h", "ata.h", "nvme.h", "capture.h", "pcie.h"]
# vm.h's structs hold the platform's pointers and the VM's state: not shared with Python.
STRUCT_HEADERS = ["engine_if.h", "program.h", "baremetal_if.h", "nvme.h", "capture.h"]
OUTPUTS = [ROOT / "hw" / "fisrig_hw" / "contract.py"]

DEFINE = re.compile(r"^#define\s+(FISRIG_\w+)(?!\()[ \t]+\S", re.M)  # not function-like; a value on its line (an include guard has none)
ENUM = re.compile(r"\benum\s+(fisrig_\w+)\s*\{(.*?)\}", re.S)
STRUCT = re.compile(r"\bstruct\s+(fisrig_\w+)\s*\{(.*?)\};", re.S)
MEMBER = re.compile(r"^(?:volatile\s+)?(u?int\d+_t|char|struct\s+fisrig_\w+)\s+(.+)$")
DECLARATOR = re.compile(r"^(\w+)(\[[^\]]+\])?$")


class ContractError(Exception):
    pass


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", text), flags=re.S)


def scan(headers):
    """(constants, enums {name: [members]}, structs {name: [(member, type)]}) by name."""
    constants, enums, structs = [], {}, {}
    for name in HEADERS:
        text = strip_comments((INCLUDE / "fisrig" / name).read_text())
        constants += [m.group(1) for m in DEFINE.finditer(text) if not m.group(1).endswith("_H")]
        for m in ENUM.finditer(text):
            members = [re.match(r"\s*(\w+)", item).group(1) for item in m.group(2).split(",") if item.strip()]
            enums[m.group(1)] = members
            constants += members
        if name not in STRUCT_HEADERS:
            continue
        for m in STRUCT.finditer(text):
            members = []
            for decl in (d.strip() for d in m.group(2).split(";")):
                if not decl:
                    continue
                mm = MEMBER.match(" ".join(decl.split()))
                if not mm:
                    raise ContractError(f"{name}: struct {m.group(1)}: cannot read member '{decl}'")
                for d in (x.strip() for x in mm.group(2).split(",")):
                    dm = DECLARATOR.match(d)
                    if not dm:
                        raise ContractError(f"{name}: struct {m.group(1)}: cannot read member '{d}'")
                    members.append((dm.group(1), mm.group(1), bool(dm.group(2))))
            structs[m.group(1)] = members
    return constants, enums, structs


def leaves(structs, name, prefix=""):
    """Every scalar or array member of struct name, nested structs expanded as a.b."""
    for member, ctype, is_array in structs[name]:
        inner = ctype.split()[-1] if ctype.startswith("struct") else None
        if inner and not is_array:
            yield from leaves(structs, inner, prefix + member + ".")
        else:
            yield prefix + member, is_array


def c_program(constants, structs):
    lines = ["#include <stddef.h>", "#include <stdio.h>"] + [f'#include "fisrig/{h}"' for h in HEADERS]
    lines.append("int main(void) {")
    for c in constants:
        lines.append(f'  printf("C {c} %llu\\n", (unsigned long long)({c}));')
    for s in structs:
        lines.append(f'  printf("S {s} %zu\\n", sizeof(struct {s}));')
        for path, is_array in leaves(structs, s):
            m = f"((struct {s} *)0)->{path}"
            count = f"sizeof({m}) / sizeof({m}[0])" if is_array else "1"
            lines.append(f'  printf("F {s} {path} %zu %zu %zu\\n", offsetof(struct {s}, {path}), '
                         f"sizeof({m}), (size_t)({count}));")
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def compute():
    constants, enums, structs = scan(HEADERS)
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "contract.c", Path(tmp) / "contract"
        src.write_text(c_program(constants, structs))
        build = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", str(INCLUDE), "-o", str(exe), str(src)],
                               capture_output=True, text=True)
        if build.returncode:
            raise ContractError(f"{cc} could not build the layout program: " + build.stderr.strip().splitlines()[0])
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    values, sizes, fields = {}, {}, {s: {} for s in structs}
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "C":
            values[rest[0]] = int(rest[1])
        elif kind == "S":
            sizes[rest[0]] = int(rest[1])
        else:
            fields[rest[0]][rest[1]] = tuple(int(x) for x in rest[2:])
    for s, f in fields.items():
        at = 0
        for path, (off, size, _) in sorted(f.items(), key=lambda kv: kv[1][0]):
            if off != at:
                raise ContractError(f"struct {s}: {off - at:+d} bytes of implicit padding or overlap before {path}")
            at = off + size
        if at != sizes[s]:
            raise ContractError(f"struct {s}: {sizes[s] - at} bytes of implicit padding at the end")
    return values, enums, sizes, fields


def literal(name, value):
    """Hex where the C writes it so (magics, masks, addresses), else decimal."""
    if value > 0xFF and (name.endswith("_MAGIC") or value & 0xFFF == 0 or value & (value + 1) == 0):
        return f"{value:#x}"
    return f"{value:_}"


def render(values, enums, sizes, fields):
    out = ['"""Generated by scripts/gen_contract.py from firmware/core/include/fisrig/'
           "{" + ",".join(h[:-2] for h in HEADERS) + "}.h",
           "with the C compiler's values, offsets and sizes: do not edit; run the script after a",
           'header changes (tests/host/test_contract.py fails while this is stale)."""', "", "# Every #define and enum member."]
    out += [f"{name} = {literal(name, value)}" for name, value in values.items()]
    out += ["", "# enum name -> its members in declaration order.", "ENUMS = {"]
    out += [f"    {name!r}: {members!r}," for name, members in enums.items()]
    out += ["}", "", "# struct name -> sizeof.", "SIZES = {"]
    out += [f"    {name!r}: {size}," for name, size in sizes.items()]
    out += ["}", "", "# struct name -> {field (nested structs as a.b): (offset, bytes, elements)}, in declaration order.",
            "FIELDS = {"]
    for name, f in fields.items():
        out.append(f"    {name!r}: {{")
        out += [f"        {path!r}: {t!r}," for path, t in f.items()]
        out.append("    },")
    out += ["}", ""]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated module is stale")
    args = parser.parse_args()
    try:
        text = render(*compute())
    except ContractError as e:
        print(f"gen_contract: {e}", file=sys.stderr)
        return 2
    stale = [p for p in OUTPUTS if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"gen_contract: {p.relative_to(ROOT)} is stale: run scripts/gen_contract.py", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(text)
        print(f"gen_contract: wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
