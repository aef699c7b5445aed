/* Segments across a fleet: N nodes take ranges of one tag from one store through
 * their StoreGuard; the store has a history (an asynchronous replica that lags and is
 * promoted, a wipe, a backup or dump restored, an operator who recreates the tag at
 * any start or lowers max_id by hand). Property: no number is handed out twice
 * (ids.pml). docs/reliability.md, "What is proven", gives the bounds and the state
 * counts; model/README.md how to run it.
 *
 * Three configurations, each checking the promise of one set of rules:
 *   (default)   a fleet that shares a registry: the fleet floor with the node's own
 *               marks and the history check, under every fault; no number twice.
 *   -DSTATIC    no fleet floor (static: worker ids): the node's marks and the history
 *               check, under the faults that change the store's identity (a promoted
 *               replica, an older copy restored elsewhere) within the margin.
 *   -DSELF      no fleet floor, every fault, and the promise of the node's own marks
 *               alone: no node hands out a number it handed out before.
 * Guards, each removable with -D (the runner checks that every removal is caught):
 *   NO_FLEET_FLOOR     FleetFloor::take in StoreGuard::allocate_once
 *   NO_FLOOR_CAS       the floor's compare-and-set (FleetRecords::replace): a blind write
 *   NO_SERVED_MARKS    the check of a range against ServedMarks::highest
 *   NO_IDENTITY_CHECK  the check of a range's history against the verified one
 * STORY_WIPE and STORY_RESTORE keep one kind of store fault: with NO_FLEET_FLOOR they
 * give the two repeats measured on real servers (docs/stores.md, "The fleet floor"). */

#include "ids.pml"

#ifndef N
#define N 2                 /* nodes */
#endif
#define STEP 1              /* each range is STEP numbers: (max_id - STEP, max_id] */
#define MARGIN 2            /* segment.failover_margin */
#ifndef MAXN                /* the store hands out no number above this (a bound) */
#ifdef STATIC
#define MAXN 6
#else
#define MAXN 5
#endif
#endif
#ifndef MAX_FAULTS
#ifdef STATIC
#define MAX_FAULTS 3
#else
#define MAX_FAULTS 2
#endif
#endif
#define NEWF 16             /* recorded identity "new:k" is kept as NEWF + k */

/* Fault kinds switched on (1) per configuration. */
#if defined(STORY_WIPE)
#define F_WIPE 1
#define F_RECREATE 1
#elif defined(STORY_RESTORE)
#define F_RESTORE 1
#elif defined(STATIC)
#define F_NEWHIST 1
#define F_CRASH 1
#define WITHIN_MARGIN 1     /* what a change of history loses fits in the margin */
#else
#define F_NEWHIST 1
#define F_WIPE 1
#define F_RESTORE 1
#define F_RECREATE 1
#define F_LOWER 1
#define F_CRASH 1
#endif
#ifndef F_NEWHIST
#define F_NEWHIST 0
#endif
#ifndef F_WIPE
#define F_WIPE 0
#endif
#ifndef F_RESTORE
#define F_RESTORE 0
#endif
#ifndef F_RECREATE
#define F_RECREATE 0
#endif
#ifndef F_LOWER
#define F_LOWER 0
#endif
#ifndef F_CRASH
#define F_CRASH 0
#endif
/* The stories start from two nodes that both served, as on the real servers. */
#if defined(STORY_WIPE) || defined(STORY_RESTORE)
#define FAULT(kind) (faults < MAX_FAULTS && F_##kind && served[0] > 0 && served[1] > 0)
#else
#define FAULT(kind) (faults < MAX_FAULTS && F_##kind)
#endif

#if defined(STATIC) || defined(SELF) || defined(NO_FLEET_FLOOR)
#define NOFLOOR 1
#endif

/* The store: the tag's row and the identity record (idforge_meta, idforge:meta). */
bit  exists = 1;            /* the tag's row */
byte maxid;                 /* its max_id */
byte rec = NEWF + 1;        /* the recorded identity: created new by `tag create` */
byte cur = 1;               /* the history it is now (SegmentStore::identity) */
/* an older copy of it: its asynchronous replica as of its last sync, or a backup */
bit  c_ex = 1;
byte c_max;
byte c_rec = NEWF + 1;
#ifdef WITHIN_MARGIN
byte top;                   /* the highest max_id any history reached */
#endif
/* the fleet floor's record of the tag in the registry (FloorState, at most one range
 * above the floor: kMaxRangesAbove is 1 here) */
byte ff, fa, fb;
/* each node: what survives a restart (DATA_DIR/segments-served) ... */
byte served[N];             /* ServedMarks::highest */
byte seen[N];               /* ServedMarks::seen_identity */
/* ... and what does not (StoreGuard) */
byte ver[N];                /* verified_: 0 until check() */
byte vrec[N];               /* recorded_: the record when verified */
byte ph[N];                 /* where its allocate_once is */
byte sf[N];                 /* the range it holds: sf .. sf + STEP - 1 */
byte rfl[N];                /* the floor a refusal raises the tag to */
#ifdef NO_FLOOR_CAS
byte rff[N], rfa[N], rfb[N]; /* the floor record as the node read it */
#endif
byte faults;
byte ids = 1;               /* the last history number given out */
#ifdef SELF
int mine_lo[N];             /* what each node handed out */
#endif

#define IDLE 0
#define GOT 1               /* a range past the node's checks, the floor not yet asked */
#define RAISE 2             /* a refused range: raise the tag (raise_tag) */
#define TAKE 3              /* (NO_FLOOR_CAS) the floor read, not yet written */
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define LAST(n) (sf[n] + STEP - 1)

byte k, x1, y1, x2, y2, tries, hi;  /* scratch within one step, 0 between steps */

#include "segments_guard.pml"
#include "segments_world.pml"
