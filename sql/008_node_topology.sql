-- 008_node_topology: what a node can run and how it is connected, as its
-- worker reports them at register (docs/agent-protocol.md, "Register"), and
-- the communication settings each node of an attempt was given.
-- Forward-only: never edit after merge.

-- The Python probe: PyTorch version, FSDP, DeepSpeed (worker/caps.h);
-- '{}' when the worker reported nothing (a worker from before this change).
ALTER TABLE nodes ADD COLUMN capabilities jsonb NOT NULL DEFAULT '{}';
-- Interfaces, InfiniBand ports, GPU PCIe links and paths (worker/topo.h).
ALTER TABLE nodes ADD COLUMN interconnect jsonb NOT NULL DEFAULT '{}';
-- trainyard-nccl-probe's all-reduce bandwidths; NULL when never probed.
ALTER TABLE nodes ADD COLUMN nccl_probe jsonb;

-- The NCCL/gloo settings this node's part of the attempt got, with the
-- reason for each (server/nccl_env.h): {"env":{...},"variables":[...]};
-- NULL until the assignment is handed out.
ALTER TABLE allocations ADD COLUMN nccl jsonb;
