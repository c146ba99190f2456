"""Packaging that pyproject.toml cannot say: the bundled data packages.

The top-level `scenarios/`, `contracts/` and `probes/` folders are the source of the bundled
suite, contracts and probes; `package_dir` maps them to the packages `harness.bundled.scenarios` and
`harness.bundled.contracts`, so a wheel carries them under `harness/bundled/` and an
editable install maps those names back to the folders. `harness.bundled.bundled_dir`
finds them (through `importlib.resources`); their files are listed in pyproject.toml's
`[tool.setuptools.package-data]`. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

DATA_PACKAGES = {
    "harness.bundled.scenarios": "scenarios",
    "harness.bundled.contracts": "contracts",
    "harness.bundled.contracts.captures": "contracts/captures",
    "harness.bundled.contracts.schema": "contracts/schema",
    "harness.bundled.probes": "probes",
}

setup(
    packages=[
        *find_packages(include=["harness*", "fake_providers*"]),
        "harness.schemas",
        *DATA_PACKAGES,
    ],
    package_dir=DATA_PACKAGES,
)
