/* The Snowflake model's surroundings (included by snowflake.pml): time, the wall
 * clocks, the network between each node and the coordinator, and (REDIS) the
 * coordinator losing its data. */

/* WHO(cond): picks a node i for which cond holds (i is the world's own variable). */
#if N > 2
#define WHO(cond) if :: cond(0) -> i = 0 :: cond(1) -> i = 1 :: cond(2) -> i = 2 fi
#define ANY(cond) (cond(0) || cond(1) || cond(2))
#else
#define WHO(cond) if :: cond(0) -> i = 0 :: cond(1) -> i = 1 fi
#define ANY(cond) (cond(0) || cond(1))
#endif
#define CAN_BACK(k) (off[k] > OFF_LO)
#define CAN_FORWARD(k) (off[k] < OFF_HI)
#define ANYONE(k) true
#define JUMPED(k) (off[k] > OFF_HI)
#define CUT(k) (part[k] == 1)

active proctype world() {
  byte i;
  atomic {
    do
    :: i < N -> off[i] = BIAS; run node(i); i++
    :: else -> i = 0; break
    od
  }
end:
  do
  :: atomic { now < TMAX ->
       now++;
       keeper_round(0); keeper_round(1);
#if N > 2
       keeper_round(2);
#endif
       skip
     }
  /* A wall clock stepped back or forward (NTP, a bad RTC), running or between runs. */
  :: atomic { FAULT(STEP) && ANY(CAN_BACK) ->
       WHO(CAN_BACK); off[i]--; faults++;
       printf("| t=%d node %d's clock steps back to %d\n", now, i, CLOCK(i));
       i = 0
     }
  :: atomic { FAULT(STEP) && ANY(CAN_FORWARD) ->
       WHO(CAN_FORWARD); off[i]++; faults++;
       printf("| t=%d node %d's clock steps forward to %d\n", now, i, CLOCK(i));
       i = 0
     }
  /* A jump: far forward (trusted_ms does not follow it), until it is set right. */
  :: atomic { FAULT(JUMP) ->
       WHO(ANYONE); off[i] = off[i] + JUMP; faults++;
       printf("| t=%d node %d's clock jumps forward to %d\n", now, i, CLOCK(i));
       i = 0
     }
  :: atomic { ANY(JUMPED) ->
       WHO(JUMPED); off[i] = BIAS;
       printf("| t=%d node %d's clock is set right\n", now, i);
       i = 0
     }
  /* A network partition between a node and the coordinator, and its end. */
  :: atomic { FAULT(CUT) ->
       WHO(ANYONE); part[i] = 1; faults++;
       printf("| t=%d node %d is cut off from the coordinator\n", now, i);
       i = 0
     }
  :: atomic { ANY(CUT) ->
       WHO(CUT); part[i] = 0;
       printf("| t=%d node %d reaches the coordinator again\n", now, i);
       i = 0
     }
#ifdef REDIS
  /* Redis loses its data (FLUSHALL, a restart without persistence): the lease and the
   * mark are gone and its history changes, which the next kAcquireLua notices. */
  :: atomic { !lossed ->
       holder = 0; mark = 0; mlay = 0; changed = 1; lossed = 1;
       printf("| t=%d the coordinator loses its data: the lease and the mark\n", now)
     }
#endif
  od
}
