"""The same behaviour over fakeredis and the real Redis (db 11): fixtures shared with the other guard."""

from tests.support.guards import client, clock, guards_redis_url, real_redis

__all__ = ["client", "clock", "guards_redis_url", "real_redis"]
