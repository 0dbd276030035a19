"""The mechanism-design engine: a notion (rows per output column) + a linear loss + master rows.

See :mod:`lpmech.design.notion` for the interface every notion implements.
"""

from .notion import Intersection, Notion, NotionCertificate

__all__ = ["Intersection", "Notion", "NotionCertificate"]
