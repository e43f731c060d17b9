"""The one packaging fact pyproject.toml cannot state: the top-level `data/` folder (the pin list
and the demo set) ships as the package `tau_mcp_data`, beside the code packages found below.

Everything else (metadata, dependencies, package data, scripts) is in pyproject.toml.
"""

from setuptools import find_packages, setup

CODE = ["servers", "conversation", "grading", "simulator", "harness"]

setup(
    packages=[
        *find_packages(include=[p for name in CODE for p in (name, f"{name}.*")]),
        "tau_mcp_data",
    ],
    package_dir={"tau_mcp_data": "data"},
)
