"""Regenerate the compact hashicorp/aws schema snapshot used by the python-hcl2 fallback.

usage: python make_schema.py TERRAFORM PROVIDER_DIR OUT.json.gz
  TERRAFORM     a terraform binary (1.x)
  PROVIDER_DIR  the folder holding terraform-provider-aws_v<version>* (e.g. a filesystem mirror's
                registry.terraform.io/hashicorp/aws/5.100.0/linux_amd64)

`terraform providers schema -json` (about 14 MB) is reduced to what a static argument check needs:
per block, attribute name -> [type, flags (r required, o optional, c computed)] and nested block name ->
[nesting mode, min items, max items, block]. The schema describes the hashicorp/aws provider
(MPL-2.0); this file is a mechanical extract of it. Run it trusted, outside the sandbox: it only
asks the provider for its schema.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def compact(block):
    out = {}
    attrs = {k: [a.get("type", "dynamic"), ("r" if a.get("required") else "") + ("o" if a.get("optional") else "")
                 + ("c" if a.get("computed") else "")] for k, a in (block.get("attributes") or {}).items()}
    if attrs:
        out["a"] = attrs
    blocks = {k: [b["nesting_mode"], b.get("min_items", 0), b.get("max_items", 0), compact(b["block"])]
              for k, b in (block.get("block_types") or {}).items()}
    if blocks:
        out["b"] = blocks
    return out


def main():
    terraform, provider_dir, out = sys.argv[1:4]
    version = Path(provider_dir).parent.name
    with tempfile.TemporaryDirectory() as tmp:
        rc = Path(tmp) / "terraformrc"
        rc.write_text('provider_installation {\n  dev_overrides {\n'
                      f'    "registry.terraform.io/hashicorp/aws" = "{provider_dir}"\n  }}\n  direct {{}}\n}}\n')
        (Path(tmp) / "main.tf").write_text('terraform {\n  required_providers {\n'
                                            '    aws = { source = "hashicorp/aws" }\n  }\n}\n')
        env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "CHECKPOINT_DISABLE": "1"}
        raw = subprocess.run([terraform, "providers", "schema", "-json"], cwd=tmp, env=env, check=True,
                             capture_output=True, text=True).stdout
    schema = json.loads(raw)["provider_schemas"]["registry.terraform.io/hashicorp/aws"]
    snapshot = {"provider_version": version,
                "provider": compact(schema["provider"]["block"]),
                "resource": {k: compact(v["block"]) for k, v in sorted(schema["resource_schemas"].items())},
                "data": {k: compact(v["block"]) for k, v in sorted(schema["data_source_schemas"].items())}}
    data = json.dumps(snapshot, separators=(",", ":"), sort_keys=True).encode()
    with open(out, "wb") as f:
        f.write(gzip.compress(data, 9, mtime=0))
    print(f"{out}: hashicorp/aws {version}, {len(snapshot['resource'])} resources, {len(snapshot['data'])} data sources")


if __name__ == "__main__":
    main()
