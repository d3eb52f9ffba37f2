#!/usr/bin/env bash
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
id -u
echo 2100 > /proc/sys/vm/nr_hugepages; grep -i huge /proc/meminfo
echo 5 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages 2>&1; cat /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages 2>&1
nvcc -O2 -arch=sm_90 -o /tmp/tlb2 scratch/tlb2.cu && /tmp/tlb2 4
dmesg 2>/dev/null | grep -i -E "iommu|dmar" | head -5
ls /sys/class/iommu/ 2>&1 | head
