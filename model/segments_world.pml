/* The segment store's history and its operator (included by segments.pml). */

active proctype world() {
  byte i;
  atomic {
    do
    :: i < N -> run node(i); i++
    :: else -> i = 0; break
    od
  }
end:
  do
  /* Replication catches up, or a backup or logical dump is taken: a copy of the store
   * as it is, its rows and its identity record. */
  :: atomic { (F_NEWHIST || F_RESTORE) && (c_ex != exists || c_max != maxid || c_rec != rec) ->
       c_ex = exists; c_max = maxid; c_rec = rec
     }
  /* The copy comes back under a new history: an asynchronous replica that missed
   * writes is promoted (a new PostgreSQL timeline, a new Redis replication id), or a
   * backup is restored on another host or an older SQLite file put back. */
  :: atomic { (FAULT(NEWHIST)
#ifdef WITHIN_MARGIN
               && top <= c_max + MARGIN
#endif
              ) ->
       faults++; exists = c_ex; maxid = c_max; rec = c_rec; ids++; cur = ids;
       printf("| an older copy of the store (a replica, a backup) takes over as history %d: max_id %d\n",
              cur, maxid)
     }
  /* The store loses everything and starts a new history (Redis without its data). */
  :: atomic { FAULT(WIPE) ->
       faults++; exists = 0; maxid = 0; rec = 0; ids++; cur = ids;
       printf("| the store is wiped, history %d\n", cur)
     }
  /* The copy is loaded back into the same server (a logical dump, its data directory):
   * its rows and its identity record come back, and so does its identity. */
  :: atomic { FAULT(RESTORE) && (c_ex != exists || c_max != maxid || c_rec != rec) ->
       faults++; exists = c_ex; maxid = c_max; rec = c_rec;
       printf("| a dump is restored into the same store: max_id %d again\n", maxid)
     }
  /* An operator recreates the lost tag at any start, from a machine that sees no
   * registry (idforge tag create: record_new_store_identity, then create_tag). */
  :: atomic { FAULT(RECREATE) && !exists ->
       faults++;
       if :: rec == 0 -> rec = NEWF + cur :: else fi;
       exists = 1;
#ifdef STORY_WIPE
       maxid = 0;           /* as on the real servers: at 1 */
#else
       i = 0; do :: break :: i < 3 -> i++ od; maxid = i; i = 0;
#endif
       printf("| an operator recreates the tag to start at %d\n", maxid + 1)
     }
  /* An operator lowers max_id by hand. */
  :: atomic { FAULT(LOWER) && exists && maxid > 0 ->
       faults++;
       i = 0; do :: break :: i + 1 < maxid -> i++ od; maxid = i; i = 0;
       printf("| an operator lowers max_id to %d\n", maxid)
     }
  od
}
