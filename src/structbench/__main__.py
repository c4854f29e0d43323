"""``python -m structbench``: the same command line as the ``structbench`` script."""

from structbench.cli import main

raise SystemExit(main())
