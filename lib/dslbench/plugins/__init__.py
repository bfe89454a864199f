"""The DSL folders under toolchains/ as one package: toolchains/<dsl>/validator.py is the module
`dslbench.plugins.<dsl>.validator`. A validator imports its sibling helpers like any module
(`from . import nf_struct`), and a reader follows registry -> validator -> helper by name. The DSL
folders need no __init__.py: each is a namespace package found through this package's path."""
from ..paths import toolchains_dir

__path__ = [str(toolchains_dir())]
