# shellcheck shell=bash
# python-pip: the python image plus Debian's python3-pip (pip 23.0, which has `pip --python`),
# for zygo's cached venvs (`zygo run --requirements`, a function's `requirements`), and
# libpython3.11, which a warm Python function's embedded agent loads (as the official python
# images ship it). One layer, no .pyc files. Opt-in, cached.

inputs_python_pip() {
  inputs_debian
}

build_python_pip() {
  debian_image "$1" python3,python3-pip,libpython3.11 '["python3"]'
}
