"""Builds popsim's C++ core with CMake (in the style of pybind/cmake_example).

The CMake build directory persists under build/<type>, so repeated installs
are incremental (and use ccache). Environment variables:
  POPSIM_BUILD_TYPE    Release (default), Debug or RelWithDebInfo
  POPSIM_BUILD_DIR     where CMake builds (default build/<type>)
  POPSIM_BUILD_TESTS   1 to also build the GoogleTest binaries, 0 to configure
                       without them (unset: as the build directory already is,
                       without them in a new one)
  CMAKE_ARGS           extra CMake arguments
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: all cores)
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch  # the build needs torch's CMake package

        build_type = os.environ.get("POPSIM_BUILD_TYPE", "Release")
        build_dir = Path(os.environ.get("POPSIM_BUILD_DIR", ROOT / "build" / build_type.lower()))
        output_dir = Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        tests_setting = os.environ.get("POPSIM_BUILD_TESTS")
        build_tests = tests_setting == "1"
        new_build_dir = not (build_dir / "CMakeCache.txt").exists()
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            f"-DCMAKE_BUILD_TYPE={build_type}",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPOPSIM_PYTHON_OUTPUT_DIR={output_dir}",
        ]
        if tests_setting is not None or new_build_dir:
            configure.append(f"-DPOPSIM_BUILD_TESTS={'ON' if build_tests else 'OFF'}")
        if shutil.which("ninja") and new_build_dir:
            configure += ["-G", "Ninja"]
        configure += [arg for arg in os.environ.get("CMAKE_ARGS", "").split() if arg]
        subprocess.run(configure, check=True)

        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        build = ["cmake", "--build", str(build_dir), "--parallel", jobs]
        if not build_tests:
            build += ["--target", "popsim_python"]
        subprocess.run(build, check=True)


class FreshBuildPy(build_py):
    """Copies the package into the build directory, first removing the modules
    an earlier build left there that the sources no longer have: setuptools
    only adds files, so a module moved since would still be installed."""

    def run(self):
        target = Path(self.build_lib) / "popsim"
        source = ROOT / "python" / "popsim"
        if target.is_dir():
            for stale in [path for path in target.rglob("*.py")
                          if not (source / path.relative_to(target)).exists()]:
                stale.unlink()
        super().run()
        # The start-up hook that lets `import popdist` find popsim's PopDist API when no
        # real PopDist is installed (python/_popsim_popdist.py says how). A .pth file must
        # sit at the top of site-packages, which is the top of the wheel's build_lib.
        self.copy_file(str(ROOT / "python" / "popsim-popdist.pth"),
                       str(Path(self.build_lib) / "popsim-popdist.pth"))


setup(ext_modules=[CMakeExtension("popsim._C")],
      cmdclass={"build_ext": CMakeBuild, "build_py": FreshBuildPy})
