"""The old home of the ticket (``torchdoctor report``): its renderers live in ``render/`` now
(``render/ticket.py``, ``render/collect_env.py``, ``render/summary.py``); their names are
re-exported here for the callers that import them from this module. No logic."""

from torchdoctor.render.collect_env import CNC, NO_CUDA, collect_env_fields, collect_env_text  # noqa: F401
from torchdoctor.render.summary import (  # noqa: F401
    build_summary,
    gpu_summary,
    sm_name,
    summary_line,
    torch_summary,
    verdict,
)
from torchdoctor.render.text import compress_ints, known, md_code, md_prose, md_text  # noqa: F401
from torchdoctor.render.ticket import (  # noqa: F401
    COMPACT_LISTS,
    fact_rows,
    fact_sections,
    finding_items,
    render_ticket,
    skipped_groups,
)
