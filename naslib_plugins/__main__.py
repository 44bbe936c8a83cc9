import sys

from naslib_plugins.cli import main

sys.exit(main())
