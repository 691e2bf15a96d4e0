"""`python -m dev.standin`: a stand-in forge served until SIGINT/SIGTERM (dev.standin.forge.main)."""

from dev.standin.forge import main

raise SystemExit(main())
