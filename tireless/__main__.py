from tireless.cli import main

raise SystemExit(main())
