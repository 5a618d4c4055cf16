import type { ChatActorHost } from '../actors/chat-actor-host.ts'
import type { CatalogueService } from '../providers/catalogue/catalogue-service.ts'
import type { Store } from '../store/index.ts'
import type { OffThreadReads } from '../store/read-thread.ts'
import type { ReplicationPosition } from '../store/replication-position.ts'
import type { ReplicationRoleSource } from '../store/replication-role.ts'

/** What the HTTP layer is given to serve; built once by main (or by a test). */
export type AppDeps = {
  store: Store
  catalogue: Pick<CatalogueService, 'list' | 'findByName' | 'pricesAsOf' | 'resolve' | 'pricesAt' | 'checkVersion'>
  /** The clock, so usage windows can be tested at a fixed time. */
  now: () => Date
  /** The chat actors of this node: every turn and cancel goes through them. */
  host: ChatActorHost
  build: { version: string; commit: string }
  /** Primary or replica (LiteFS): a replica relays writes to the primary. */
  role: ReplicationRoleSource
  /** Where this node's copy stands in LiteFS's log: a replica answers a relayed write once it has it. */
  position: ReplicationPosition
  nodeId: string
  /** The read thread (decision 048): history reads off the event loop; absent, they read on it. */
  reads?: OffThreadReads | null
}
