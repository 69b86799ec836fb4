"""The SDK's build backend (PEP 517 and PEP 660), standard library only, so that
`pip install ./sdk/python` works offline in a fresh venv: a venv has pip and setuptools
but not `wheel`, which setuptools needs to build one, and pip would otherwise fetch a
build backend from PyPI. It packs zygo_sdk/ as a pure-Python wheel; the package's name,
version and extras are here, the one place they are written."""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "zygo-sdk"
VERSION = "0.1.0"
SUMMARY = "Call functions in Zygo's warm sandboxes from Python"
REQUIRES_PYTHON = ">=3.8"
EXTRAS = {"grpc": ["grpcio>=1.51", "protobuf>=3.20"]}  # Debian 12's grpcio, protobuf

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "zygo_sdk"
_DIST = NAME.replace("-", "_")
_TAG = "py3-none-any"


def _metadata() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Typing :: Typed",
    ]
    for extra, requirements in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(_ROOT, "README.md"), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _package_files():
    """(path in the archive, path on disk) of every file of the package, sorted."""
    for directory, subdirs, files in os.walk(os.path.join(_ROOT, _PACKAGE)):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(directory, name)
                yield os.path.relpath(path, _ROOT), path


class _Wheel:
    """A wheel being written: each file's hash goes into RECORD, written last."""

    def __init__(self, directory: str) -> None:
        self.name = f"{_DIST}-{VERSION}-{_TAG}.whl"
        self._zip = zipfile.ZipFile(os.path.join(directory, self.name), "w",
                                    zipfile.ZIP_DEFLATED)
        self._record = []

    def add(self, arcname: str, data: bytes) -> None:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self._record.append(f"{arcname},sha256={digest.decode()},{len(data)}")
        self._write(arcname, data)

    def _write(self, arcname: str, data: bytes) -> None:
        # A fixed date: the same source makes the same wheel.
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)

    def finish(self) -> str:
        dist_info = f"{_DIST}-{VERSION}.dist-info"
        self.add(f"{dist_info}/METADATA", _metadata().encode())
        self.add(f"{dist_info}/WHEEL", (
            "Wheel-Version: 1.0\nGenerator: zygo_build\nRoot-Is-Purelib: true\n"
            f"Tag: {_TAG}\n").encode())
        self.add(f"{dist_info}/top_level.txt", f"{_PACKAGE}\n".encode())
        record = f"{dist_info}/RECORD"
        self._write(record, ("\n".join(self._record + [f"{record},,"]) + "\n").encode())
        self._zip.close()
        return self.name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = _Wheel(wheel_directory)
    for arcname, path in _package_files():
        with open(path, "rb") as f:
            wheel.add(arcname, f.read())
    return wheel.finish()


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth puts this directory on sys.path: edits show at once."""
    wheel = _Wheel(wheel_directory)
    wheel.add(f"__editable__.{_DIST}.pth", (_ROOT + "\n").encode())
    return wheel.finish()


def build_sdist(sdist_directory, config_settings=None):
    base = f"{_DIST}-{VERSION}"
    name = f"{base}.tar.gz"
    files = [(arcname, path) for arcname, path in _package_files()]
    files += [(n, os.path.join(_ROOT, n)) for n in ("pyproject.toml", "README.md",
                                                    "_build/zygo_build.py")]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        for arcname, path in files:
            tar.add(path, arcname=f"{base}/{arcname}", recursive=False)
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mode = len(pkg_info), 0o644
        tar.addfile(info, io.BytesIO(pkg_info))
    return name
