import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# No result cache in tests (a test that patches a rule must not meet a cached result, and no
# .kvlint_cache/ lands in the checkout); tests/test_cache.py turns it back on where it tests it.
os.environ["KVLINT_NO_CACHE"] = "1"
