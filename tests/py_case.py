"""The case a C model test dumps for its PyG comparison (py_rsage_pyg, py_rgcn_pyg, py_rgat_pyg).

case(binary, args, variable) runs the test binary with `variable` naming a file in a temporary
directory, where the test writes one case (its parameters, inputs, minibatch and logits) as
JSON, and returns that case as a dict.
"""
import json
import os
import subprocess
import tempfile


def case(binary, args, variable):
    with tempfile.TemporaryDirectory(prefix="gd-case-") as tmp:
        path = os.path.join(tmp, "case.json")
        subprocess.run([binary] + list(args), env=dict(os.environ, **{variable: path}),
                       check=True)
        with open(path) as f:
            return json.load(f)
