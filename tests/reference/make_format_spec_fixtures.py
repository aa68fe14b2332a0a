#!/usr/bin/env python3
"""Python's own str.format results for ModelCheckpoint's filepath placeholders.

Run (from the repository root; any Python 3.11 or later, nothing to install):

    python3 tests/reference/make_format_spec_fixtures.py   # rewrites tests/reference/callbacks/format_spec.json

ModelCheckpoint fills "{epoch:02d}" and "{val_loss:.4f}" as Keras does, with Python's str.format. This script
formats a table of floats (log values) and ints (epoch, batch) with format specs that combine every part of the
mini-language Tower implements for numbers, [[fill]align][sign][#][0][width][grouping][.precision][type] with
grouping ',' or '_' and type one of d e E f F g G n % or none, and records what Python writes, or that Python
refuses the spec (ValueError). The file is written in a fixed order, so reruns give identical files.

tests/reference/callbacks/format_spec.json:

    python_version
    values  [{"value": repr of the value, "int": whether it is an int}]
    cases   [[spec, [for each of values: what "{x:<spec>}".format(x=value) gives, or null when Python raises
              ValueError]]]
"""
import json
import math
import os
import platform

FLOATS = [-0.0, 1.0, 100.0, 2.5, 1234.5678, -1234.5678, 0.00012345, 9.995, 123456789.0, 1e16, -math.inf,
          math.nan]
INTS = [0, -42, 1234567]
TYPES = ["", "e", "E", "f", "F", "g", "G", "n", "%", "d"]
PRECISIONS = ["", ".0", ".1", ".3", ".12"]
# [[fill]align][sign][#][0][width][grouping] parts, alone and combined.
FLAGS = ["", "+", " ", "#", "0", ",", "_", "+012,", "<12", "^12", "=12", "*^15", "0=12,", "#015", " 010_", "x<9",
         "+#14_", "-020,"]


def main():
    cases = []
    for flags in FLAGS:
        for precision in PRECISIONS:
            for type_ in TYPES:
                spec = flags + precision + type_
                results = []
                for value in FLOATS + INTS:
                    try:
                        results.append(("{x:" + spec + "}").format(x=value))
                    except ValueError:
                        results.append(None)
                cases.append([spec, results])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callbacks", "format_spec.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        values = [{"value": repr(v), "int": isinstance(v, int)} for v in FLOATS + INTS]
        json.dump({"python_version": platform.python_version(), "values": values, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"{out}: {len(cases)} specs")


if __name__ == "__main__":
    main()
