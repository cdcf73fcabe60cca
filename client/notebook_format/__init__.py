"""A notebook, as both sides read it: the one parser the client and the server share.

``ppo-submit notebook.ipynb`` (and ``notebook.submit`` in a kernel) on a learner's machine, and
the dashboard's upload form on the server, turn a notebook into the module its learner meant
with this package and nothing else, so the same file gets the same answer, the same caps and
the same sentences both ways. It ships in both distributions (``client/pyproject.toml`` and
the server's ``pyproject.toml`` list it); it imports neither side.

- :mod:`~notebook_format.reader`: the file's bytes to its code cells. One cap on its size
  (:data:`~notebook_format.reader.MAX_NOTEBOOK_BYTES`) and on its cells, checked before
  anything is built; read, upgraded and checked with nbformat, as Jupyter reads it.
- :mod:`~notebook_format.cells`: a code cell without IPython's own syntax (magics, ``!``).
- :mod:`~notebook_format.bindings` and :mod:`~notebook_format.closure`: what the cells
  leave bound, and the function with only what it reads (:func:`~notebook_format.closure.build`).
- :mod:`~notebook_format.functions`: which exercise a source answers, by its functions.
- :mod:`~notebook_format.module`: all of it together, :func:`~notebook_format.module.module_of`.
- :mod:`~notebook_format.errors`: :class:`~notebook_format.errors.SourceError`, the one
  sentence every refusal here is.

Nothing in a notebook is executed. Standard library only, and nbformat, imported only when a
notebook file is read (the kernel's helper never needs it).
"""
