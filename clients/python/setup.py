"""Builds either the pure package (what `pip install ./clients/python` makes; it runs the
mediagen-emulator found on PATH) or, for a release, a platform wheel that carries the binary.

scripts/release sets two variables for a platform wheel:

    MEDIAGEN_EMULATOR_WHEEL_BINARY    the binary built for that platform
    MEDIAGEN_EMULATOR_WHEEL_PLATFORM  its wheel platform tag, e.g. manylinux_2_17_x86_64

The binary goes where Ruff's goes: into the wheel's scripts, so installing the wheel puts
`mediagen-emulator` in the environment's bin/ (Scripts\\ on Windows), next to the Python that
runs the helpers, which is where mediagen_emulator looks for it first.
"""

import os
import shutil

from setuptools import setup
from setuptools.command.install_scripts import install_scripts

BINARY = os.environ.get("MEDIAGEN_EMULATOR_WHEEL_BINARY", "")
PLATFORM = os.environ.get("MEDIAGEN_EMULATOR_WHEEL_PLATFORM", "")
cmdclass = {}

if BINARY:
    if not PLATFORM:
        raise SystemExit("MEDIAGEN_EMULATOR_WHEEL_BINARY needs MEDIAGEN_EMULATOR_WHEEL_PLATFORM")
    if not os.path.isfile(BINARY):
        raise SystemExit("MEDIAGEN_EMULATOR_WHEEL_BINARY: no file %s" % BINARY)

    try:
        from setuptools.command.bdist_wheel import bdist_wheel  # setuptools 70.1 and later
    except ImportError:
        from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """A wheel for one platform and any Python 3: the package is pure, the binary is not."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return "py3", "none", PLATFORM

    class InstallBinary(install_scripts):
        """Copies the binary into the scripts folder, keeping it executable (setuptools' own
        script handling reads scripts as Python text)."""

        def run(self):
            super().run()
            name = "mediagen-emulator.exe" if BINARY.endswith(".exe") else "mediagen-emulator"
            self.mkpath(self.install_dir)
            target = os.path.join(self.install_dir, name)
            shutil.copyfile(BINARY, target)
            os.chmod(target, 0o755)
            self.outfiles.append(target)

    cmdclass = {"bdist_wheel": PlatformWheel, "install_scripts": InstallBinary}

setup(cmdclass=cmdclass)
