import sys
from pathlib import Path

# The package under test: sdks/python/agentgraph.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
