import sys

from reviewbench.cli import main

sys.exit(main())
