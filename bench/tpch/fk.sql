-- TPC-H foreign keys (specification clause 1.4.2.3), added after the primary keys they
-- reference. PostgreSQL creates no index for a foreign key's referencing columns.
alter table nation add foreign key (n_regionkey) references region;
alter table supplier add foreign key (s_nationkey) references nation;
alter table customer add foreign key (c_nationkey) references nation;
alter table partsupp add foreign key (ps_partkey) references part;
alter table partsupp add foreign key (ps_suppkey) references supplier;
alter table orders add foreign key (o_custkey) references customer;
alter table lineitem add foreign key (l_orderkey) references orders;
alter table lineitem add foreign key (l_partkey, l_suppkey) references partsupp;
