"""The site's build: one MkDocs plugin, :class:`site_build.plugin.SiteBuild`.

``mkdocs.yml`` uses it as ``- site_build`` under ``plugins:``; ``pyproject.toml`` registers it
under the ``mkdocs.plugins`` entry point. The plugin's ``on_*`` methods call the stage modules of
this package in one documented order (see :mod:`site_build.plugin`). What the stages share lives
in one place each:

* :mod:`site_build.markers`: the syntax a page uses (``<!-- build-output: ... -->``,
  ``<!-- needs-extra: ... -->``, ``<!-- kernels.json: ... -->``, ``--8<--`` includes, excerpt
  fences, verified outputs), imported by the tests too;
* :mod:`site_build.runner`: how a snippet runs as a reader runs it (fresh interpreter, scratch
  folder, no ``PYTHONPATH`` of the build's, the library alone of the repository importable), for the
  build and the tests;
* :mod:`site_build.store`: the execution cache of what the build runs (figures, notebooks, build
  outputs), keyed by :func:`netcl_lite.fingerprint.key`, the key the capstone's run uses too.

``netcl_lite`` imports nothing from here: the library knows nothing of its documentation.
"""
