import sys

from simtgpu.cli.main import main

sys.exit(main())
