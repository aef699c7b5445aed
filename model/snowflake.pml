/* Snowflake across a fleet: N nodes take worker-id leases from one coordinator and
 * issue IDs (layout, tick, worker id). Property: no two IDs issued by any nodes are
 * equal (ids.pml). docs/reliability.md, "What is proven", states the bounds and what
 * lies outside the model; model/README.md says how to run it.
 *
 * One slot. IDs of two slots differ in their node fields under both layouts of the
 * model (they have the same fields), and the registry keeps each slot's lease and mark
 * apart, so a repeat can only be two IDs of one slot. A node that does not hold this
 * slot holds another one or none: neither can repeat this slot's IDs. So the model
 * watches one slot, and the nodes contend for it.
 *
 * Time is one integer `now` (the monotonic clocks, taken to run at one rate: the fence
 * margin, ttl/20, is what covers their difference). Each node's wall clock is now plus
 * its offset; the generator reads it through its trusted time. One ID per tick: a tick
 * whose sequence ran out is the tick's one ID, so logical's borrowing of the next tick
 * stands for both the sequence and a clock behind the last ID.
 *
 * Coordinators: by default one that keeps what it acknowledged (etcd, ZooKeeper);
 * with -DREDIS one that may lose its data once (FLUSHALL, a restart without
 * persistence), for which the start delay and the earlier fence exist.
 *
 * Guards, each removable with -D (the runner checks that every removal is caught):
 *   NO_FENCE          the keeper's fence at ttl - margin (LeaseKeeper::decide_locked)
 *   NO_RESERVATION    no ID past the stored mark (SnowflakeGeneratorImpl::await_reservation)
 *   NO_ACQUIRED_MARK  a clean stop's mark is at least the mark found at acquire
 *                     (LeaseKeeper::stop: max(last_unix_ms, lease_.high_water_ms))
 *   NO_RELEASE_CHECK  release_at_mark writes only while the lease is still this node's
 *   NO_LAYOUT_FLOOR   a new layout starts above the old one's IDs (first_tick_above)
 *   NO_START_DELAY    (REDIS) a slot taken within 2 x ttl of a lost history waits
 *   NO_JUMP_GUARD     (REDIS) a forward clock jump is not followed (trusted_ms)
 *   NO_STOP_LAYOUT    a clean stop that issued nothing at or above the mark it found
 *                     labels that mark with its own layout (LeaseKeeper::stop) */

#include "ids.pml"

#ifndef N
#define N 2                 /* nodes contending for the slot */
#endif
#ifdef REDIS
#define TTL 2               /* lease time to live, in ticks */
#define FMARGIN 0           /* max(ttl/20, 50 ms), below a tick here */
#else
#define TTL 3
#define FMARGIN 1           /* max(ttl/20, 50 ms): fence this much before the TTL */
#endif
#define DRIFT 1             /* max_drift_ms: logical runs at most this far ahead */
#define STEP 1              /* max_clock_step_ms: a larger forward step is a jump */
#define JUMP 3              /* how far a jump moves a clock forward */
#define E1 1                /* layout 1 is layout 0 with an epoch E1 ticks later */
#ifndef TMAX                /* the last moment of real time explored */
#ifdef REDIS
#define TMAX 7
#else
#define TMAX 6
#endif
#endif
#define T0 2                /* time starts here, so clocks set back stay >= 0 */

/* The fence deadline, from the last renew sent (default_fence_after_ms); a Redis lease
 * of a logical node fences DRIFT earlier (LeaseKeeper::reserve_issue_ahead). The mark
 * is kept a whole fence window ahead (held_lease.cc, reserve_for_outages). */
#ifdef REDIS
#define FENCE (TTL - FMARGIN - DRIFT)
#else
#define FENCE (TTL - FMARGIN)
#endif
/* How far ahead the mark is stored. A server keeps it a fence window ahead
 * (reserve_for_outages), which bounds a holder's IDs as tightly as its fence does. With
 * -DREDIS the lease is short (ttl_ms about 1 s, as RedisSentinelTest runs it): the
 * generator keeps its one-second reserve, which outlasts the fence window, so there the
 * fence is what stops a holder cut off from a coordinator that lost its marks. */
#ifdef REDIS
#define RES (FENCE + 1)
#else
#define RES FENCE
#endif
#define WAIT RES            /* max_startup_wait_ms: reserve_ms + 1 s, in whole ticks */
#define RENEW_BELOW (RES - 1)   /* max(fence - 1 s, fence / 2), in ticks */

/* Clock offsets are kept + BIAS, within [OFF_LO, OFF_HI] but for a jump. A node that
 * starts trusts its clock, so where marks can be lost (REDIS) the clocks of two nodes
 * must differ by less than ttl + margin (docs/operations.md, "Start delay"). */
#define BIAS 2
#ifdef REDIS
#define OFF_LO 1            /* -1 .. +1: two clocks up to a whole ttl apart */
#define OFF_HI 3
#else
#define OFF_LO 0            /* -2 .. +2 */
#define OFF_HI 4
#endif

/* Faults: at most MAX_FAULTS in a run, of the kinds switched on (1) below. The Redis
 * data loss comes on top, once. */
#ifndef MAX_FAULTS
#ifdef REDIS
#define MAX_FAULTS 2
#else
#define MAX_FAULTS 3
#endif
#endif
#ifdef REDIS
#define F_STOP 0            /* stops, freezes and layouts: the etcd configuration's */
#define F_FREEZE 0
#define F_LAYOUT 0
#define F_JUMP 1
#else
#define F_STOP 1            /* a clean stop (release_at_mark) */
#define F_FREEZE 1          /* a node paused between its fence check and its claim */
#define F_LAYOUT 1          /* a node started under the other layout */
#define F_JUMP 0            /* with marks kept, a jump costs waiting, never a repeat */
#endif
#define F_CRASH 1           /* SIGKILL */
#define F_STEP 1            /* a wall clock stepped back or forward by one tick */
#define F_CUT 1             /* a node cut off from the coordinator (and healed) */
#define FAULT(kind) (faults < MAX_FAULTS && F_##kind)
#if F_JUMP && !defined(NO_JUMP_GUARD)
#define TRUSTED 1           /* the trusted time needs tracking only when clocks jump */
#endif

#define FREE 0              /* no lease (not started, stopped, crashed, elsewhere) */
#define HOLD 1              /* holds the lease, generator live */
#define LOST 2              /* the registry said LeaseLost: fenced for good */

byte now = T0;
/* the coordinator's record of the slot */
byte holder;                /* 0: free; else node + 1 */
byte expiry;                /* the lease ends at this time unless renewed */
byte mark;                  /* the stored high-water mark */
bit  mlay;                  /* the layout the mark was written under */
#ifdef REDIS
bit  changed;               /* its data was lost and no acquire has noticed yet */
byte noticed = 255;         /* when an acquire noticed the new history */
bit  lossed;
byte ready[N];              /* the start delay ends here */
#endif
/* each node */
byte st[N];                 /* FREE, HOLD, LOST */
byte lastok[N];             /* when the last successful renew was sent */
byte glast[N];              /* the generator's last tick (its state word) */
bit  claimed[N];            /* it claimed a tick above its floor (last_unix_ms != 0) */
byte resv[N];               /* the mark it stored last (reserved_tick_) */
byte acqm[N];               /* the mark found at acquire (lease_.high_water_ms) */
bit  acql[N];               /* and its layout */
bit  lay[N];                /* the layout this run uses */
bit  part[N];               /* cut off from the coordinator */
bit  pend[N];               /* a claim past its fence check, frozen before its CAS */
byte off[N];                /* wall clock - now, + BIAS */
byte trust[N];              /* trusted time - now, + BIAS */
/* fault counts */
byte faults;

byte tick, fl, c;           /* scratch within one atomic step, 0 between steps */

#define EPOCH(l) ((l) * E1)
#define ID(l, t) ((t) - EPOCH(l))
#define CLOCK(n) (now + off[n] - BIAS)
#define LAST(n) (claimed[n] -> glast[n] : 0)          /* last_unix_ms() */
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define LEASE_OK(n) (holder == (n) + 1 && now < expiry)
#define SLOT_FREE (holder == 0 || now >= expiry)

/* The fence, checked before every claim (SnowflakeGeneratorImpl::claim; the watchdog,
 * LeaseKeeper::watch_loop and decide_locked, fences on time: kOverdue, kWaiting). */
#ifdef NO_FENCE
#define OVERDUE_OK(n) true
#else
#define OVERDUE_OK(n) (now < lastok[n] + FENCE)
#endif
#if defined(REDIS) && !defined(NO_START_DELAY)
#define WAIT_OK(n) (now >= ready[n])
#else
#define WAIT_OK(n) true
#endif
#define FENCE_OK(n) (st[n] == HOLD && OVERDUE_OK(n) && WAIT_OK(n))

/* The tick a generator of layout l starts above, given the mark m written under layout
 * ml (SnowflakeGeneratorImpl::init; internal::first_tick_above: the largest ID ml can
 * have made by m, read in l). Both layouts have the same fields, so that is m moved by
 * the difference of the epochs. A mark of 0 (none) leaves tick 0 of l. */
#ifdef NO_LAYOUT_FLOOR
#define FLOOR(m, ml, l) MAX(m, EPOCH(l))
#else
#define FLOOR(m, ml, l) ((m) < EPOCH(ml) -> EPOCH(l) : (m) - EPOCH(ml) + EPOCH(l))
#endif

/* The trusted time of node n into `c` (SnowflakeGeneratorImpl::trusted_ms): a reading
 * more than STEP past the trusted time is a jump and is not followed. */
inline read_clock(n) {
  c = CLOCK(n);
#ifdef TRUSTED
  if
  :: c > now + trust[n] - BIAS + STEP -> c = now + trust[n] - BIAS
  :: else -> if :: off[n] > trust[n] -> trust[n] = off[n] :: else fi
  fi
#endif
}

/* The rest of a claim once the fence check passed: claim_linear (logical: the clock's
 * tick, else the next one while at most DRIFT ahead), then await_reservation (no ID
 * past the stored mark). A tick refused there is a gap, never a repeat. */
inline claim_rest(n) {
  read_clock(n);
  tick = MAX(c, glast[n] + 1);
  if
  :: tick <= c + DRIFT ->
     glast[n] = tick; claimed[n] = 1;
#ifndef NO_RESERVATION
     if
     :: tick <= resv[n] ->
#endif
        printf("| t=%d node %d issues ID %d (layout %d, tick %d; claim_linear)\n",
               now, n, ID(lay[n], tick), lay[n], tick);
        HANDOUT(ID(lay[n], tick))
#ifndef NO_RESERVATION
     :: else ->
        printf("| t=%d node %d claims tick %d past its stored mark %d: refused, a gap (await_reservation)\n",
               now, n, tick, resv[n])
     fi
#endif
  :: else      /* more than DRIFT ahead of the clock: resource_exhausted */
  fi;
  tick = 0; c = 0
}

/* What a node's lease keeper and Snowflake part do on each tick of time, unless the
 * node is cut off: LeaseKeeper::renew_loop renews (every ttl/3: once a tick) carrying
 * the reservation, and a LeaseLost answer fences for good (is_lease_lost);
 * SnowflakePart::tend -> renew_reservation stores a mark a fence window past
 * max(trusted time, last tick) once what is left falls below RENEW_BELOW
 * (store_mark_locked -> LeaseKeeper::store_mark, one more renew). */
inline keeper_round(n) {
  if
  :: st[n] == HOLD && !part[n] ->
     if
     :: LEASE_OK(n) ->
        expiry = now + TTL; lastok[n] = now;
        read_clock(n);
        c = MAX(c, glast[n]);
        if
        :: resv[n] < c + RENEW_BELOW -> resv[n] = c + RES
        :: else
        fi;
        mark = MAX(mark, resv[n]); mlay = lay[n]; c = 0
     :: else ->
        st[n] = LOST;
        printf("| t=%d node %d: the renew says its lease is lost; fenced for good (renew_loop)\n",
               now, n)
     fi
  :: else
  fi
}

/* What a process keeps in memory only, gone when it stops or crashes (kept at 0 so
 * that states differ only in what matters). */
inline forget(n) {
  st[n] = FREE; pend[n] = 0; lastok[n] = 0; glast[n] = 0; claimed[n] = 0; resv[n] = 0;
  acqm[n] = 0; acql[n] = 0;
#ifdef TRUSTED
  trust[n] = 0;
#endif
#ifdef REDIS
  ready[n] = 0;
#endif
  skip
}

proctype node(byte n) {
end:
  do
  /* HeldLease::acquire -> WorkerRegistry::acquire (the slot when free or expired,
   * with its mark), then SnowflakeGeneratorImpl::init (start above the mark) and its
   * first store_mark_locked through LeaseKeeper::store_mark. A node whose lease was
   * lost takes a new one with its layout (SnowflakePart::tend, open_lease); a node
   * that starts may run the other layout (a layout change between runs). */
  :: atomic { (st[n] != HOLD && !part[n] && pend[n] == 0 && SLOT_FREE
#ifdef REDIS
               && off[n] <= OFF_HI     /* a jumped clock is set right before a start */
#endif
              ) ->
       if
       :: st[n] == FREE && FAULT(LAYOUT) -> lay[n] = 1 - lay[n]; faults++
       :: true
       fi;
       st[n] = HOLD; holder = n + 1; expiry = now + TTL; lastok[n] = now;
       acqm[n] = mark; acql[n] = mlay;
#ifdef REDIS
       if
       :: changed -> noticed = now; changed = 0
       :: else
       fi;
       ready[n] = (noticed != 255 && now < noticed + 2 * TTL -> noticed + 2 * TTL : 0);
#endif
       fl = FLOOR(acqm[n], acql[n], lay[n]);
       if
       :: fl + 1 > CLOCK(n) + DRIFT + WAIT ->
          /* start_refused: the clock would have to wait longer than
           * max_startup_wait_ms; the lease is given back with its mark unchanged
           * (LeaseKeeper::stop with no generator: release) */
          printf("| t=%d node %d takes the slot, mark %d of layout %d, but refuses to start under layout %d: tick %d is too far ahead (start_refused)\n",
                 now, n, acqm[n], acql[n], lay[n], fl + 1);
          holder = 0; forget(n)
       :: else ->
          glast[n] = fl; claimed[n] = 0;
#ifdef TRUSTED
          trust[n] = off[n];
#endif
          resv[n] = MAX(CLOCK(n), fl + 1) + RES;
          mark = MAX(mark, resv[n]); mlay = lay[n];
          printf("| t=%d node %d takes the slot, mark %d of layout %d; starts under layout %d above tick %d, reserving to %d (acquire, init)\n",
                 now, n, acqm[n], acql[n], lay[n], fl, resv[n])
       fi;
       fl = 0
     }
  /* The Snowflake part's thread between two rounds (it looks every 100 ms, and at
   * once when a request asks): SnowflakePart::tend -> renew_reservation ->
   * store_mark_locked -> LeaseKeeper::store_mark, a renew carrying the new mark. */
  :: atomic { st[n] == HOLD && !part[n] && LEASE_OK(n) ->
       read_clock(n);
       c = MAX(c, glast[n]);
       if
       :: resv[n] < c + RENEW_BELOW ->
          resv[n] = c + RES; expiry = now + TTL; lastok[n] = now;
          mark = MAX(mark, resv[n]); mlay = lay[n];
          printf("| t=%d node %d stores the mark %d (renew_reservation)\n", now, n, resv[n])
       :: else
       fi;
       c = 0
     }
  /* SnowflakeGeneratorImpl::claim: the fence check, then the claim. */
  :: atomic { FENCE_OK(n) && pend[n] == 0 -> claim_rest(n) }
  /* The same claim, frozen (a paused VM) between its fence check and its CAS. */
  :: atomic { FENCE_OK(n) && pend[n] == 0 && FAULT(FREEZE) ->
       pend[n] = 1; faults++;
       printf("| t=%d node %d passes the fence check and freezes before its claim\n", now, n)
     }
  :: atomic { pend[n] == 1 ->
       pend[n] = 0;
       printf("| t=%d node %d wakes and finishes its claim\n", now, n);
       claim_rest(n)
     }
  /* SIGKILL: the lease stays with the coordinator until it expires. */
  :: atomic { st[n] != FREE && FAULT(CRASH) ->
       forget(n); faults++;
       printf("| t=%d node %d crashes\n", now, n)
     }
  /* A clean stop: the server drains its requests, LeaseKeeper::stop fences and calls
   * WorkerRegistry::release_at_mark with max(last ID's time, the mark at acquire),
   * written only while the lease is still this node's; a lost lease is left alone.
   * A holder that issued nothing at or above the mark it found releases that mark
   * under the layout it was written in: labelled with the holder's own layout, an
   * earlier layout's mark would be read in the wrong terms by the next start. */
  :: atomic { (st[n] != FREE && pend[n] == 0 && FAULT(STOP)) ->
       faults++;
       if
       :: (st[n] == HOLD && !part[n]
#ifndef NO_RELEASE_CHECK
           && LEASE_OK(n)
#endif
          ) ->
#ifdef NO_ACQUIRED_MARK
          fl = LAST(n);
#else
          fl = MAX(LAST(n), acqm[n]);
#endif
          mark = fl; holder = 0;
#ifdef NO_STOP_LAYOUT
          mlay = lay[n];
#else
          if
          :: LAST(n) >= acqm[n] -> mlay = lay[n]
          :: else -> mlay = acql[n]
          fi;
#endif
          printf("| t=%d node %d stops cleanly: the slot is released at mark %d, layout %d (release_at_mark)\n",
                 now, n, fl, mlay); fl = 0
       :: else ->
          printf("| t=%d node %d stops; the lease is not its own to release\n", now, n)
       fi;
       forget(n)
     }
  od
}

#include "snowflake_world.pml"
