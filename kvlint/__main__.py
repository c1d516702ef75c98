import sys

from kvlint.cli import main

sys.exit(main())
