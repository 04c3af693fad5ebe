"""Which server of a cluster a call about a model goes to."""

import time
from typing import Dict, List, Optional

import grpc

# How a cluster's server that does not serve a model names those that do,
# at the end of its UNAVAILABLE status (docs/api.md, "Cluster mode").
_SERVED_BY = "(servers="


def served_by(code: grpc.StatusCode, details: str) -> List[str]:
    """The servers an UNAVAILABLE status names for its model, or []."""
    if code != grpc.StatusCode.UNAVAILABLE:
        return []
    at = details.rfind(_SERVED_BY)
    end = details.find(")", at)
    if at < 0 or end < 0:
        return []
    return [s for s in details[at + len(_SERVED_BY):end].split(",") if s]


class Router:
    """The servers to try, in order: for a model, those a cluster named for
    it; for anything else, the configured ones, starting with the last that
    answered. A server that could not be reached or did not answer is
    passed over for AVOID_FOR seconds while another is left (a cluster
    naming it again does not bring it back first)."""

    AVOID_FOR = 10.0

    def __init__(self, servers: List[str]):
        self.servers = servers
        self._preferred = 0
        self._owners: Dict[str, List[str]] = {}
        self._avoid_until: Dict[str, float] = {}

    def address_for(self, model: str) -> str:
        """The server for a call about `model` ("": about none)."""
        return self.next_for(model, []) or self.servers[0]

    def next_for(self, model: str, asked: List[str]) -> Optional[str]:
        """The server address_for would pick among those not in `asked`
        (a read asking the next server while the ones before have not
        answered), or None when every server it may go to is in `asked`."""
        owners = self._owners.get(model) if model else None
        line = [address for address in owners or
                (self.servers[self._preferred:] +
                 self.servers[:self._preferred])
                if address not in asked]
        now = time.monotonic()
        for address in line:
            if self._avoid_until.get(address, 0.0) <= now:
                return address
        return line[0] if line else None

    def candidates(self, model: str) -> int:
        """How many servers a call about `model` may go to."""
        owners = self._owners.get(model) if model else None
        return len(owners) if owners else len(self.servers)

    def learn_owners(self, model: str, servers: List[str]) -> None:
        if model and servers:
            self._owners[model] = list(servers)

    def failed(self, model: str, address: str) -> None:
        """`address` could not be reached: try the next one."""
        self._avoid_until[address] = time.monotonic() + self.AVOID_FOR
        owners = self._owners.get(model) if model else None
        if owners and owners[0] == address:
            owners.append(owners.pop(0))
        elif self.servers[self._preferred] == address:
            self._preferred = (self._preferred + 1) % len(self.servers)
