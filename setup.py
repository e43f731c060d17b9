"""The one packaging fact pyproject.toml cannot state: the repository's top-level folders are
installed under one namespace, `tau_mcp` (issue 29). `tau_mcp/` holds only the namespace's own
module (the public API); `servers/`, `conversation/`, `grading/`, `simulator/`, `harness/` and
`data/` stay where the design puts them and are mapped to `tau_mcp.<folder>` (setuptools'
package-dir mapping, which editable installs and wheels both honour).

Everything else (metadata, dependencies, package data, scripts) is in pyproject.toml.
"""

from setuptools import find_packages, setup

NAMESPACE = "tau_mcp"
FOLDERS = ["servers", "conversation", "grading", "simulator", "harness", "data"]

packages = [NAMESPACE]
package_dir = {NAMESPACE: NAMESPACE}
for folder in FOLDERS:
    package_dir[f"{NAMESPACE}.{folder}"] = folder
    packages.append(f"{NAMESPACE}.{folder}")
    for sub in find_packages(where=folder):
        packages.append(f"{NAMESPACE}.{folder}.{sub}")

setup(packages=packages, package_dir=package_dir)
