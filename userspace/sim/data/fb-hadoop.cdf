# FB-Hadoop flow-size distribution (bytes, cumulative percent), from Roy et al.,
# "Inside the Social Network's (Datacenter) Network", SIGCOMM 2015, in the form
# used by the HPCC ns-3 simulator: alibaba-edu/High-Precision-Congestion-Control,
# traffic_gen/FbHdp_distribution.txt. Piecewise-linear between points.
0 0
100 1
200 2
300 5
350 15
400 20
500 30
600 40
700 50
1000 60
2000 67
7000 70
30000 72
50000 82
80000 87
120000 90
300000 95
1000000 97.5
2000000 99
10000000 100
