# Found first on PYTHONPATH (python -m kiln.compat puts it there), this
# placeholder installs Kiln's alias for `triton` and hands the import over to
# it: `import triton` then gives the kiln module, in child processes too.
import sys

import kiln.compat

del sys.modules[__name__]
kiln.compat.install()
sys.modules[__name__] = __import__("kiln")
