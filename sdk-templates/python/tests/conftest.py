import sys
from pathlib import Path

# The runtime package under test: sdk-templates/python/agentgraph.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
