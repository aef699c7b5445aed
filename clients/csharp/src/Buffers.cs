// The local buffers of a Client and the queue of its refill thread.
using System.Collections.Generic;
using System.Threading;

namespace Idforge.Client
{
    internal enum RefillState { Idle, Queued, Running }

    /// <summary>What the refill thread and the statistics need of a buffer of any type.</summary>
    internal abstract class BufferBase
    {
        protected BufferBase(Kind kind, string tag, double maxAgeMs)
        {
            Kind = kind;
            Tag = tag;
            MaxAgeMs = maxAgeMs;
        }

        public readonly object Sync = new object(); // guards everything below; Monitor.Wait on it
        public readonly Kind Kind;
        public readonly string Tag;
        public readonly double MaxAgeMs; // 0: no age limit
        public int Size;
        public RefillState State;
        public long Gen; // counts finished refills
        public IdforgeException Error; // of the last refill, null if it worked
        public bool ErrorTriedAll; // that refill was a caller's: it tried every server
        public double RetryAt; // no background refill before this (monotonic ms)
        public long Dropped; // IDs dropped by the age limit
        public long Refills;

        public abstract void Expire(double now);

        public abstract void Clear();

        /// <summary>Run by the refill thread (state already Running).</summary>
        public abstract void RefillInBackground(Client client);
    }

    internal sealed class Chunk<T>
    {
        public double FetchedAt; // when the request that fetched them was sent
        public T[] Ids;
        public int Next;
    }

    /// <summary>A caller waiting on an empty buffer: a refill hands it an ID first.</summary>
    internal sealed class Waiter<T>
    {
        public T Value;
        public bool Filled;
    }

    internal sealed class IdBuffer<T> : BufferBase
    {
        public IdBuffer(Kind<T> kind, string tag, double maxAgeMs) : base(kind, tag, maxAgeMs)
        {
            TypedKind = kind;
        }

        public readonly Kind<T> TypedKind;
        public readonly Queue<Chunk<T>> Chunks = new Queue<Chunk<T>>();
        public readonly LinkedList<Waiter<T>> Waiters = new LinkedList<Waiter<T>>();

        public override void Expire(double now)
        {
            while (Chunks.Count > 0 && now - Chunks.Peek().FetchedAt > MaxAgeMs)
            {
                Chunk<T> chunk = Chunks.Dequeue();
                int n = chunk.Ids.Length - chunk.Next;
                Size -= n;
                Dropped += n;
            }
        }

        public T Take()
        {
            Chunk<T> chunk = Chunks.Peek();
            T value = chunk.Ids[chunk.Next++];
            if (chunk.Next == chunk.Ids.Length) Chunks.Dequeue();
            Size--;
            return value;
        }

        public override void Clear()
        {
            Chunks.Clear();
            Size = 0;
        }

        public override void RefillInBackground(Client client) => client.RefillInBackground(this);
    }

    /// <summary>The buffers queued for the refill thread.</summary>
    internal sealed class RefillQueue
    {
        readonly Queue<BufferBase> items = new Queue<BufferBase>();
        bool closed;

        public bool Closed
        {
            get
            {
                lock (items) return closed;
            }
        }

        public void Put(BufferBase buffer)
        {
            lock (items)
            {
                if (closed) return;
                items.Enqueue(buffer);
                Monitor.Pulse(items);
            }
        }

        /// <summary>The next buffer, or null after <paramref name="timeoutMs"/> or once closed.</summary>
        public BufferBase Take(int timeoutMs)
        {
            lock (items)
            {
                if (items.Count == 0 && !closed) Monitor.Wait(items, timeoutMs);
                if (closed || items.Count == 0) return null;
                return items.Dequeue();
            }
        }

        public void Close()
        {
            lock (items)
            {
                closed = true;
                items.Clear();
                Monitor.PulseAll(items);
            }
        }
    }
}
