"""Build script: compiles every .pyx under mypgdriver/ into its own extension.

Globbing keeps adding a codec module a one-file change.
"""
import os
import pathlib

from setuptools import Extension, setup

HERE = pathlib.Path(__file__).parent
DEBUG = os.environ.get("MYPGDRIVER_DEBUG") == "1"

# Hand-written C compiled into a module next to its .pyx, for what Cython
# cannot express (see the comment at the top of each file).
EXTRA_C_SOURCES = {
    "mypgdriver.protocol.record": ["csrc/record_type.c"],
}
# Their headers: any module may include one through a .pxd, so a change to
# a header rebuilds every module (and lists the headers in the sdist).
C_HEADERS = sorted(str(h.relative_to(HERE)) for h in HERE.glob("mypgdriver/**/*.h"))


def _extensions():
    from Cython.Build import cythonize

    exts = []
    for pyx in sorted(HERE.glob("mypgdriver/**/*.pyx")):
        rel = pyx.relative_to(HERE)
        modname = ".".join(rel.with_suffix("").parts)
        exts.append(
            Extension(
                modname,
                [str(rel)] + EXTRA_C_SOURCES.get(modname, []),
                # Headers of those C files are included as
                # "mypgdriver/protocol/..." by every module that cimports them.
                include_dirs=[str(HERE)],
                depends=C_HEADERS,
                extra_compile_args=["-O2"] + (["-O0", "-g"] if DEBUG else []),
            )
        )
    return cythonize(
        exts,
        language_level=3,
        nthreads=os.cpu_count() or 1,
        annotate=os.environ.get("MYPGDRIVER_ANNOTATE") == "1",
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": DEBUG,
            "cdivision": True,
            "embedsignature": True,
            "freethreading_compatible": False,
        },
    )


setup(
    ext_modules=_extensions(),
    # Compile the modules in parallel when pip or a PEP 517 frontend builds
    # the wheel (they cannot pass -j); a -j on the command line still wins.
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
