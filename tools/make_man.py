"""Write docs/vnetrx.1 from the click commands: python tools/make_man.py [DATE]."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from vnetrx.cli import cli
from vnetrx.cli.manpage import man_page

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    date = sys.argv[1] if len(sys.argv) > 1 else datetime.date.today().isoformat()
    (ROOT / "docs" / "vnetrx.1").write_text(man_page(cli, date))
