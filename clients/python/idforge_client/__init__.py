"""Python client of idforge: IDs from a list of servers with failover and a local
buffer, and Snowflake decoding without a server. Standard library only.

    from idforge_client import Client
    with Client(["http://127.0.0.1:8080", "redis://10.0.0.2:6380"]) as c:
        c.snowflake(); c.segment("order"); c.uuid7(); c.ulid()
    Client.parse(910499571847892992)  # {"id": ..., "unix_ms": ..., "worker": 25, ...}

The behaviour is docs/clients.md of the idforge repository.
"""

from .client import Client
from .errors import IdforgeError, IdforgeUnavailable
from .layout import PRESETS, parse

__all__ = ["Client", "IdforgeError", "IdforgeUnavailable", "parse", "PRESETS"]
__version__ = "0.1.0"
