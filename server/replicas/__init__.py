"""Data-parallel serving: N engine replicas on Ray Serve behind formwork's OpenAI routes.

`cluster` starts or joins Ray and deploys the replicas (`replica.EngineReplica`), `pool.ReplicaPool`
routes requests to them (`routing.PrefixRouter`: prefix affinity, then least loaded), `front` serves
the OpenAI routes over the pool with `/metrics` merged (`metrics`) and `/health` per replica, and
`deployment` is the same stack as a `serve run` application for a real cluster. Ray is optional
(`pip install 'formwork[ray]'`); nothing here imports it until replicas are deployed.
"""
