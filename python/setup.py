"""Builds neardup._neardup with the project's CMake build (the extension links the C++ library).

`pip install ./python --no-build-isolation` runs this in place: CMake configures the repository
one folder up into build/python-<interpreter> with the interpreter running pip, builds the
`_neardup` target alone, and the extension is copied into the package. The C++ dependencies are
the Debian packages scripts/install-deps.sh installs.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
# The repository; NEARDUP_SOURCE_DIR names it when this folder was copied elsewhere.
ROOT = pathlib.Path(os.environ.get("NEARDUP_SOURCE_DIR", HERE.parent)).resolve()


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").exists():
            raise RuntimeError(
                f"neardup: {ROOT} is not the neardup repository; build from a checkout of it"
            )
        tag = sysconfig.get_config_var("SOABI") or "python"
        jobs = str(os.cpu_count() or 1)
        # NEARDUP_CMAKE_BUILD_DIR: a build folder already configured with NEARDUP_BUILD_PYTHON=ON
        # for this interpreter (make test's build/release): only the extension is brought up to date.
        given = os.environ.get("NEARDUP_CMAKE_BUILD_DIR")
        build_dir = pathlib.Path(given).resolve() if given else ROOT / "build" / f"python-{tag}"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
            "-DNEARDUP_BUILD_PYTHON=ON", "-DNEARDUP_BUILD_TESTS=OFF", "-DNEARDUP_BUILD_BENCH=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if not given:
            subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_neardup", "-j", jobs],
                       check=True)
        built = build_dir / "python" / "neardup" / pathlib.Path(self.get_ext_filename(ext.name)).name
        destination = pathlib.Path(self.get_ext_fullpath(ext.name))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, destination)


setup(ext_modules=[CMakeExtension("neardup._neardup")], cmdclass={"build_ext": CMakeBuild})
