"""``python -m bridge`` is ``ccbridge``."""

from bridge.cli import main

raise SystemExit(main())
