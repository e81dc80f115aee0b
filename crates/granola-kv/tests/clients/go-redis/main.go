// go-redis v9 with its defaults (RESP3 via HELLO, CLIENT SETINFO on
// connect, pooled connections) against granola-kv: the calls a cache user
// makes, each result checked. Usage: go-redis-client HOST:PORT. Exits 1 on
// the first wrong result.
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

var failed bool

func expect(what string, got, want any, err error) {
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", what, err)
		failed = true
		return
	}
	if !reflect.DeepEqual(got, want) {
		fmt.Printf("FAIL %s: got %#v, want %#v\n", what, got, want)
		failed = true
		return
	}
	fmt.Printf("ok   %s\n", what)
}

func main() {
	ctx := context.Background()
	addr := os.Args[1]
	for _, proto := range []int{3, 2} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
		p := fmt.Sprintf("resp%d ", proto)
		must := func(what string, err error) { expect(p+what, nil, nil, err) }
		must("flushdb", rdb.FlushDB(ctx).Err())
		pong, err := rdb.Ping(ctx).Result()
		expect(p+"ping", pong, "PONG", err)
		must("set", rdb.Set(ctx, "k", "v", 0).Err())
		v, err := rdb.Get(ctx, "k").Result()
		expect(p+"get", v, "v", err)
		_, err = rdb.Get(ctx, "missing").Result()
		expect(p+"get missing is redis.Nil", err, redis.Nil, nil)
		must("set with ttl", rdb.Set(ctx, "e", "v", 10*time.Second).Err())
		ttl, err := rdb.TTL(ctx, "e").Result()
		expect(p+"ttl", ttl > 9*time.Second && ttl <= 10*time.Second, true, err)
		vals, err := rdb.MGet(ctx, "k", "missing", "e").Result()
		expect(p+"mget", vals, []any{"v", nil, "v"}, err)
		cmds, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			pl.Incr(ctx, "n")
			pl.IncrBy(ctx, "n", 5)
			return nil
		})
		expect(p+"pipeline", cmds[1].(*redis.IntCmd).Val(), int64(6), err)
		_, err = rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
			pl.Set(ctx, "a", "1", 0)
			pl.Set(ctx, "b", "2", 0)
			return nil
		})
		a, _ := rdb.Get(ctx, "a").Result()
		expect(p+"transaction", a, "1", err)
		err = rdb.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, "a").Int()
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(pl redis.Pipeliner) error {
				pl.Set(ctx, "a", n+1, 0)
				return nil
			})
			return err
		}, "a")
		a, _ = rdb.Get(ctx, "a").Result()
		expect(p+"watch", a, "2", err)
		must("hset", rdb.HSet(ctx, "h", "f1", "v1", "f2", "v2").Err())
		hm, err := rdb.HGetAll(ctx, "h").Result()
		expect(p+"hgetall", hm, map[string]string{"f1": "v1", "f2": "v2"}, err)
		must("rpush", rdb.RPush(ctx, "l", "x", "y", "z").Err())
		lr, err := rdb.LRange(ctx, "l", 0, -1).Result()
		expect(p+"lrange", lr, []string{"x", "y", "z"}, err)
		must("zadd", rdb.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: 2, Member: "m2"}).Err())
		zr, err := rdb.ZRangeWithScores(ctx, "z", 0, -1).Result()
		expect(p+"zrange withscores", zr, []redis.Z{{Score: 1.5, Member: "m1"}, {Score: 2, Member: "m2"}}, err)
		must("sadd", rdb.SAdd(ctx, "s", "a", "b").Err())
		sm, err := rdb.SMembers(ctx, "s").Result()
		sort.Strings(sm)
		expect(p+"smembers", sm, []string{"a", "b"}, err)
		var keys []string
		iter := rdb.Scan(ctx, 0, "", 2).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		sort.Strings(keys)
		expect(p+"scan iterator", keys, []string{"a", "b", "e", "h", "k", "l", "n", "s", "z"}, iter.Err())
		ty, err := rdb.Type(ctx, "h").Result()
		expect(p+"type", ty, "hash", err)
		gd, err := rdb.GetDel(ctx, "k").Result()
		expect(p+"getdel", gd, "v", err)
		ok, err := rdb.SetNX(ctx, "nx", "1", time.Minute).Result()
		expect(p+"setnx", ok, true, err)
		f, err := rdb.IncrByFloat(ctx, "f", 1.5).Result()
		expect(p+"incrbyfloat", f, 1.5, err)
		mem, err := rdb.MemoryUsage(ctx, "h").Result()
		expect(p+"memory usage > 0", mem > 0, true, err)
		info, err := rdb.Info(ctx, "server").Result()
		expect(p+"info server has redis_version", len(info) > 0 && contains(info, "redis_version:"), true, err)
		n, err := rdb.Del(ctx, "a", "b", "missing").Result()
		expect(p+"del", n, int64(2), err)
		size, err := rdb.DBSize(ctx).Result()
		expect(p+"dbsize", size, int64(8), err)
		rdb.Close()
	}
	if failed {
		os.Exit(1)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
