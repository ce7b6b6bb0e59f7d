"""`python -m bench`: run the benchmark suite."""
import sys

from .cli import main

sys.exit(main())
